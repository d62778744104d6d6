/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Small RDMA WRITEs through message channels between two processes of
 * this host (docs/fastpath.md, "WRITEs through channels":
 * paths/chan_write.c).  A (requester) and B (target); every case also
 * runs with SOFTVERBS_FASTPATH=0 (UDP, the packet path), which must give
 * the same outcomes, with the channel counters 0:
 *   bytes    WRITEs of 1 B to 2 KiB (around the channel's bound of 1008)
 *            from one SGE, split over two SGEs and inline, unsignaled
 *            but the last, then a SEND: when it arrives every written
 *            byte is in place and every byte around them untouched;
 *   order    200 WRITEs of 8 B posted one by one, unsignaled (lean mode:
 *            post_send writes them into the channel), then a SEND: all
 *            in place when it arrives; then a READ (the one-copy path,
 *            after the channel is acknowledged) gives them back;
 *   errors   each on a fresh QP pair after a good WRITE: an unknown
 *            R_Key, a range past the region, a region without
 *            REMOTE_WRITE, a region of another PD, a QP without
 *            REMOTE_WRITE: the bad unsignaled WRITE completes with
 *            REM_ACCESS_ERR, the next is flushed, both QPs in ERR, the
 *            memory untouched; B explains and counts each reason;
 *   dereg    B deregisters its region while A streams rounds of 64 WRITEs
 *            (the last signaled): the first failure is REM_ACCESS_ERR, the
 *            rest flushed, and no byte changes once ibv_dereg_mr returned;
 *   reads    small READs (paths/chan_read.c): 1 to 8 B from odd offsets
 *            into odd offsets, unsignaled but the last, 300 of them with
 *            max_rd_atomic 64 (up to 64 in the channel, each with its
 *            own result word), one of 9 B (the one-copy path)
 *            among them: every byte right, the bytes around untouched; a
 *            READ after a WRITE of the same bytes sees the WRITE; then a
 *            READ with an unknown R_Key: REM_ACCESS_ERR, the next
 *            flushed, both QPs in ERR;
 *   lean     READs posted one by one, as perftest does (lean mode:
 *            post_send writes them into the channel, counted by
 *            chan_reads_lean), with max_rd_atomic 4: 400 READs of 1 to
 *            8 B in rounds of 4, the last signaled, every byte right and
 *            the bytes around untouched (at least half by post_send);
 *            then more at once than max_rd_atomic allows in the channel:
 *            WRITE, READ of the same bytes, SEND, in turn: each READ
 *            sees its WRITE and B's receives see every WRITE before
 *            them; a fenced SEND after READs; then 20 READs, one with an
 *            unknown R_Key, 5 after it: the 20 before it complete with
 *            their bytes, it is REM_ACCESS_ERR, the 5 flushed;
 *   stopped  B is SIGSTOPped: 32 small WRITEs (unsignaled but the last,
 *            inline in turn) and then 8 small READs complete anyway - A
 *            takes them back from the channel and runs them with one
 *            copy - and after SIGCONT the channel carries WRITEs again;
 *            every byte right (skipped, 77, without the fast path:
 *            nothing reaches a stopped process's memory then).
 * Counters (SOFTVERBS_STATS at close): chan_writes, chan_reads and
 * chan_reads_lean at A,
 * chan_writes_served and chan_reads_served at B on the shm link,
 * chan_writes_taken after the stop; all 0 with SOFTVERBS_FASTPATH=0.
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "dereg_race.h"

/* The longest WRITE a channel carries (link/chan.h SV_CHAN_WRITE_MAX). */
#define CHAN_WRITE_MAX 1008u

/* ---- counters ----------------------------------------------------------- */

static const char *const counter_names[] = {
	"chan_writes",
	"chan_writes_served",
	"chan_writes_taken",
	"access_no_key",
	"access_bounds",
	"access_rights",
	"access_qp_flags",
	"access_pd",
	"direct_write",
	"chan_reads",
	"chan_reads_served",
	"chan_reads_lean",
	NULL,
};
#define NCOUNTERS (sizeof(counter_names) / sizeof(counter_names[0]) - 1)

struct counters {
	unsigned long long v[NCOUNTERS];
};

static unsigned long long counter(const struct counters *c, const char *name)
{
	for (size_t i = 0; i < NCOUNTERS; i++)
		if (!strcmp(counter_names[i], name))
			return c->v[i];
	REQUIRE(!"unknown counter");
	return 0;
}

static void stats_on(void)
{
	setenv("SOFTVERBS_STATS", "1", 1);
}

/* At least min of the counter through channels on the shm link, no
 * channel WRITE over UDP. */
static void expect_counter(struct hx_ep *ep, const char *name,
			   unsigned long long min)
{
	struct counters c;

	hx_ep_close_counters(ep, counter_names, c.v);
	if (!hx_fastpath_expected()) {
		CHECK_EQ(counter(&c, "chan_writes") +
				 counter(&c, "chan_writes_served") +
				 counter(&c, "chan_writes_taken") +
				 counter(&c, "chan_reads") +
				 counter(&c, "chan_reads_served") +
				 counter(&c, "chan_reads_lean"),
			 0);
		return;
	}
	if (counter(&c, name) < min)
		hx_log("%s: %llu, want >= %llu", name, counter(&c, name), min);
	CHECK(counter(&c, name) >= min);
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

/* ---- bytes ---------------------------------------------------------------- */

static const uint32_t sizes[] = { 1,
				  7,
				  8,
				  24,
				  40,
				  41,
				  100,
				  255,
				  1000,
				  CHAN_WRITE_MAX,
				  CHAN_WRITE_MAX + 1,
				  2048 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
enum { M_ONE, M_TWO, M_INLINE, M_NUM }; /* one SGE, two, inline */
#define SRC_SEED 5
#define DST_SEED 9
#define BYTES_MAX_INLINE 1024

/* Where WRITE k (size sizes[k / M_NUM], way k % M_NUM) goes: the same
 * offset in A's source and B's target, odd, with a gap after each. */
static size_t bytes_off(unsigned int k)
{
	size_t off = 3;

	for (unsigned int i = 0; i < k; i++)
		off += sizes[i / M_NUM] + 13;
	return off;
}

static int post_write(struct hx_ep *ep, uint64_t id, size_t off, uint32_t len,
		      int way, bool signaled)
{
	struct ibv_sge sge[2] = {
		{ (uintptr_t)ep->buf + off, len, ep->mr->lkey },
		{ 0, 0, ep->mr->lkey },
	};
	struct ibv_send_wr wr = { 0 }, *bad;

	wr.wr_id = id;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = sge;
	wr.num_sge = 1;
	wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
	wr.wr.rdma.remote_addr = ep->peer.addr + off;
	wr.wr.rdma.rkey = ep->peer.rkey;
	if (way == M_TWO && len > 1) {
		sge[0].length = len / 2;
		sge[1].addr = sge[0].addr + len / 2;
		sge[1].length = len - len / 2;
		wr.num_sge = 2;
	} else if (way == M_INLINE) {
		wr.send_flags |= IBV_SEND_INLINE;
	}
	return ibv_post_send(ep->qp, &wr, &bad);
}

static bool way_ok(const struct hx_ep *ep, unsigned int k)
{
	return k % M_NUM != M_INLINE ||
	       sizes[k / M_NUM] <= ep->cap.max_inline_data;
}

static void bytes_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	unsigned int k, n = 0, last = 0, chan = 0;

	stats_on();
	o.max_inline = BYTES_MAX_INLINE;
	o.max_send_wr = 128;
	hx_ep_open(&ep, &o, fd);
	hx_fill(ep.buf, o.buf_len, SRC_SEED);
	hx_ep_connect(&ep);
	hx_sync(fd); /* B's receive is posted, its memory filled */
	for (k = 0; k < NSIZES * M_NUM; k++)
		if (way_ok(&ep, k))
			last = k;
	for (k = 0; k < NSIZES * M_NUM; k++) {
		if (!way_ok(&ep, k))
			continue;
		HX_CHECK_RC(post_write(&ep, k, bytes_off(k), sizes[k / M_NUM],
				       (int)(k % M_NUM), k == last),
			    0);
		n++;
		chan += sizes[k / M_NUM] <= CHAN_WRITE_MAX;
	}
	hx_log("%u WRITEs, %u of them up to the channel's bound", n, chan);
	HX_EXPECT(ep.scq, NULL, last, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		  sizes[last / M_NUM]);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1000,
				 ep.buf, 8, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1000, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_send_u64(fd, ep.cap.max_inline_data);
	hx_sync(fd); /* B checked */
	expect_counter(&ep, "chan_writes", chan);
}

static void bytes_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	size_t end, x, bad = SIZE_MAX;
	uint32_t inl;
	unsigned int k;
	uint8_t *want;

	stats_on();
	o.max_inline = BYTES_MAX_INLINE;
	hx_ep_open(&ep, &o, fd);
	hx_fill(ep.buf, o.buf_len, DST_SEED);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf + o.buf_len - 64, 64,
				 ep.mr->lkey),
		    0);
	hx_sync(fd);
	HX_EXPECT_T(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 8, 10000);
	inl = (uint32_t)hx_recv_u64(fd);
	/* What the memory must be: the target's own bytes, but where a
	 * WRITE went (inline ones only where A could post them). */
	end = bytes_off(NSIZES * M_NUM) + 64;
	want = malloc(end);
	REQUIRE(want);
	for (x = 0; x < end; x++)
		want[x] = hx_pattern_byte(DST_SEED, x);
	for (k = 0; k < NSIZES * M_NUM; k++) {
		size_t off = bytes_off(k);

		if (k % M_NUM == M_INLINE && sizes[k / M_NUM] > inl)
			continue;
		for (x = off; x < off + sizes[k / M_NUM]; x++)
			want[x] = hx_pattern_byte(SRC_SEED, x);
	}
	for (x = 0; x < end; x++)
		if (ep.buf[x] != want[x]) {
			bad = x;
			break;
		}
	if (bad != SIZE_MAX)
		hx_log("first wrong byte at %zu: %#x, want %#x", bad,
		       ep.buf[bad], want[bad]);
	CHECK_EQ(bad, SIZE_MAX);
	free(want);
	hx_sync(fd);
	expect_counter(&ep, "chan_writes_served", 20);
}

/* ---- order ---------------------------------------------------------------- */

#define OR_N 200
#define OR_STRIDE 64
#define OR_AT (256 * 1024) /* B's area; A reads it back to 512 KiB */

static uint64_t or_val(int i)
{
	return 0x5a5a000000000000ull | ((uint64_t)i * 0x10001u + 7);
}

static void order_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i, wrong = -1;

	stats_on();
	o.max_send_wr = 256;
	o.send_cqe = 512;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd); /* B posted its receive */
	for (i = 0; i < OR_N; i++) {
		put64(ep.buf + 8 * i, or_val(i));
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0, (uint64_t)i,
					 ep.buf + 8 * i, 8, ep.mr->lkey,
					 ep.peer.addr + OR_AT + OR_STRIDE * i,
					 ep.peer.rkey, 0),
			    0);
	}
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 1000,
				 ep.buf, 8, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 1000, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	/* The READ after them sees them (it waits for the channel's ack). */
	for (i = 0; i < OR_N; i++)
		HX_CHECK_RC(
			hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0,
				     2000 + (uint64_t)i, ep.buf + 8 * i, 8,
				     ep.mr->lkey,
				     ep.peer.addr + 2 * OR_AT + OR_STRIDE * i,
				     ep.peer.rkey, 0),
			0);
	memset(ep.buf + OR_AT, 0, OR_N * OR_STRIDE);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 3000,
				 ep.buf + OR_AT, OR_N * OR_STRIDE, ep.mr->lkey,
				 ep.peer.addr + 2 * OR_AT, ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 3000, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		  OR_N * OR_STRIDE);
	for (i = 0; i < OR_N && wrong < 0; i++)
		if (get64(ep.buf + OR_AT + OR_STRIDE * i) != or_val(i))
			wrong = i;
	CHECK_EQ(wrong, -1);
	hx_sync(fd);
	expect_counter(&ep, "chan_writes", 2 * OR_N);
}

static void order_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i, wrong = -1;

	stats_on();
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf, 64, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT_T(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 8, 10000);
	for (i = 0; i < OR_N && wrong < 0; i++)
		if (get64(ep.buf + OR_AT + OR_STRIDE * i) != or_val(i))
			wrong = i;
	CHECK_EQ(wrong, -1);
	hx_sync(fd);
	expect_counter(&ep, "chan_writes_served", 2 * OR_N);
}

/* ---- errors --------------------------------------------------------------- */

enum {
	E_RKEY,
	E_BOUNDS,
	E_MR_RIGHTS,
	E_PD,
	E_QP_RIGHTS,
	E_NUM,
};
static const char *const err_names[E_NUM] = {
	"unknown R_Key",
	"beyond the region",
	"region without REMOTE_WRITE",
	"region of another PD",
	"QP without REMOTE_WRITE",
};
#define ER_GOOD 0 /* the good WRITEs' offset in B's buffer */
#define ER_BAD 64 /* the refused one's */
#define ER_NEXT 128 /* the one flushed after it */
#define ER_REGION 4096 /* B's extra regions */

static void errors_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int k;

	stats_on();
	hx_ep_open(&ep, &o, fd);
	for (k = 0; k < E_NUM; k++) {
		uint64_t raddr, id = 100 * (k + 1);
		uint32_t rkey, ro, other_pd;

		if (k)
			hx_ep_new_qp(&ep);
		hx_ep_connect(&ep);
		raddr = ep.peer.addr + ER_BAD;
		rkey = ep.peer.rkey;
		ro = (uint32_t)hx_recv_u64(fd); /* B's read-only MR */
		other_pd = (uint32_t)hx_recv_u64(fd);
		hx_log("case %d: %s", k, err_names[k]);
		put64(ep.buf, 0x1111111111111111ull * (uint64_t)(k + 1));
		put64(ep.buf + 8, 0xeeeeeeeeeeeeeeeeull);
		/* A good one first: the channel is attached (the QP
		 * without REMOTE_WRITE refuses its first). */
		if (k != E_QP_RIGHTS)
			HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0, id,
						 ep.buf, 8, ep.mr->lkey,
						 ep.peer.addr + ER_GOOD,
						 ep.peer.rkey, 0),
				    0);
		switch (k) {
		case E_RKEY:
			rkey = ep.peer.rkey + 0x100;
			break;
		case E_BOUNDS:
			raddr = ep.peer.addr + ep.peer.len - 4;
			break;
		case E_MR_RIGHTS:
			rkey = ro;
			raddr = ep.peer.addr + ER_REGION + ER_BAD;
			break;
		case E_PD:
			rkey = other_pd;
			raddr = ep.peer.addr + ER_REGION + ER_BAD;
			break;
		}
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0, id + 1,
					 ep.buf + 8, 8, ep.mr->lkey, raddr,
					 rkey, 0),
			    0);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 IBV_SEND_SIGNALED, id + 2, ep.buf + 8,
					 8, ep.mr->lkey, ep.peer.addr + ER_NEXT,
					 ep.peer.rkey, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, id + 1, IBV_WC_REM_ACCESS_ERR, -1, -1);
		HX_EXPECT(ep.scq, NULL, id + 2, IBV_WC_WR_FLUSH_ERR, -1, -1);
		HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
		hx_sync(fd); /* B checks its QP and memory */
	}
	hx_sync(fd);
	/* The good ones and the bad ones; the WRITE after a bad one enters
	 * the channel only if posted before the NAK came back. */
	expect_counter(&ep, "chan_writes", 2 * E_NUM - 1);
}

static void errors_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct counters c;
	struct ibv_mr *ro, *other;
	struct ibv_pd *pd2;
	struct hx_ep ep;
	uint8_t *end;
	int k;

	stats_on();
	hx_ep_open(&ep, &o, fd);
	/* The same memory, readable only; and with every right in another
	 * PD than the QP's. */
	ro = ibv_reg_mr(ep.pd, ep.buf + ER_REGION, 4096,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	REQUIRE(ro);
	pd2 = ibv_alloc_pd(ep.ctx);
	REQUIRE(pd2);
	other = ibv_reg_mr(pd2, ep.buf + ER_REGION, 4096, o.mr_access);
	REQUIRE(other);
	end = ep.buf + o.buf_len - 4;
	for (k = 0; k < E_NUM; k++) {
		if (k) {
			ep.o.qp_access =
				k == E_QP_RIGHTS ?
					IBV_ACCESS_REMOTE_READ |
						IBV_ACCESS_REMOTE_ATOMIC :
					o.qp_access;
			hx_ep_new_qp(&ep);
		}
		hx_ep_connect(&ep);
		hx_send_u64(fd, ro->rkey);
		hx_send_u64(fd, other->rkey);
		hx_sync(fd);
		CHECK_EQ(get64(ep.buf + ER_GOOD),
			 k == E_QP_RIGHTS ?
				 0x1111111111111111ull * (uint64_t)k :
				 0x1111111111111111ull * (uint64_t)(k + 1));
		CHECK_EQ(get64(ep.buf + ER_BAD), 0);
		CHECK_EQ(get64(ep.buf + ER_NEXT), 0);
		CHECK_EQ(get64(ep.buf + ER_REGION + ER_BAD), 0);
		CHECK_EQ(end[0] | end[1] | end[2] | end[3], 0);
		CHECK_EQ(hx_qp_state_wait(ep.qp, IBV_QPS_ERR, 3000),
			 IBV_QPS_ERR);
	}
	hx_sync(fd);
	CHECK_EQ(ibv_dereg_mr(ro), 0);
	CHECK_EQ(ibv_dereg_mr(other), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	hx_ep_close_counters(&ep, counter_names, c.v);
	if (hx_fastpath_expected())
		CHECK(counter(&c, "chan_writes_served") >= E_NUM - 1);
	else
		CHECK_EQ(counter(&c, "chan_writes_served"), 0);
	/* Each refusal explained and counted by its reason
	 * (engine/diag/explain.c), on either path. */
	CHECK(counter(&c, "access_no_key") >= 1);
	CHECK(counter(&c, "access_bounds") >= 1);
	CHECK(counter(&c, "access_rights") >= 1);
	CHECK(counter(&c, "access_pd") >= 1);
	CHECK(counter(&c, "access_qp_flags") >= 1);
}

/* ---- dereg ---------------------------------------------------------------- */

static void dereg_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	stats_on();
	o.max_send_wr = 128;
	o.send_cqe = 256;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	dr_write_until_refused(&ep);
	hx_sync(fd);
	expect_counter(&ep, "chan_writes", 10 * DR_BATCH);
}

static void dereg_b(int fd)
{
	dr_dereg_under_writes(fd);
}

/* ---- reads ---------------------------------------------------------------- */

#define RD_N 300
#define RD_SRC 4096 /* B's pattern, read from odd offsets */
#define RD_DST (128 * 1024) /* A's landing area, 16 bytes a READ */
#define RD_SEED 21

static uint32_t rd_len(int i)
{
	return i == RD_N / 2 ? 9 : (uint32_t)(i % 8) + 1;
}

static size_t rd_src(int i)
{
	return RD_SRC + 11 * (size_t)i + 1;
}

static void reads_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i, wrong = -1;
	uint64_t v;

	stats_on();
	o.max_send_wr = 512;
	o.send_cqe = 1024;
	o.max_rd_atomic = 64; /* every result word of the channel */
	hx_ep_open(&ep, &o, fd);
	memset(ep.buf + RD_DST, 0xcc, 16 * RD_N);
	hx_ep_connect(&ep);
	hx_sync(fd); /* B's pattern is in place */
	for (i = 0; i < RD_N; i++)
		HX_CHECK_RC(
			hx_post_send(&ep, IBV_WR_RDMA_READ,
				     i == RD_N - 1 ? IBV_SEND_SIGNALED : 0,
				     (uint64_t)i, ep.buf + RD_DST + 16 * i + 3,
				     rd_len(i), ep.mr->lkey,
				     ep.peer.addr + rd_src(i), ep.peer.rkey, 0),
			0);
	HX_EXPECT_T(ep.scq, NULL, RD_N - 1, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		    rd_len(RD_N - 1), 10000);
	for (i = 0; i < RD_N && wrong < 0; i++) {
		const uint8_t *d = ep.buf + RD_DST + 16 * i;

		for (uint32_t j = 0; j < 16; j++) {
			uint8_t want =
				j >= 3 && j < 3 + rd_len(i) ?
					hx_pattern_byte(RD_SEED,
							rd_src(i) + j - 3) :
					0xcc;

			if (d[j] != want) {
				hx_log("READ %d byte %u: %#x, want %#x", i, j,
				       d[j], want);
				wrong = i;
				break;
			}
		}
	}
	CHECK_EQ(wrong, -1);
	/* A READ after a WRITE of the same bytes sees the WRITE. */
	for (i = 0; i < 16; i++) {
		put64(ep.buf + 8 * i, 0xabcdef0000000000ull + (uint64_t)i);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0,
					 1000 + (uint64_t)i, ep.buf + 8 * i, 8,
					 ep.mr->lkey, ep.peer.addr + 8 * i,
					 ep.peer.rkey, 0),
			    0);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ,
					 i == 15 ? IBV_SEND_SIGNALED : 0,
					 2000 + (uint64_t)i,
					 ep.buf + 256 + 8 * i, 8, ep.mr->lkey,
					 ep.peer.addr + 8 * i, ep.peer.rkey, 0),
			    0);
	}
	HX_EXPECT(ep.scq, NULL, 2015, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 8);
	for (i = 0; i < 16; i++)
		CHECK_EQ(get64(ep.buf + 256 + 8 * i),
			 0xabcdef0000000000ull + (uint64_t)i);
	/* An unknown R_Key: the responder's error, the next flushed. */
	v = 0x7777777777777777ull;
	put64(ep.buf + 512, v);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, 0, 3000, ep.buf + 512,
				 8, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey + 0x100, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 3001,
				 ep.buf + 520, 8, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 3000, IBV_WC_REM_ACCESS_ERR, -1, -1);
	HX_EXPECT(ep.scq, NULL, 3001, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	CHECK_EQ(get64(ep.buf + 512), v);
	hx_sync(fd);
	/* (The 9-byte READ takes the one-copy path, and the small ones
	 * after it join its batch.) */
	expect_counter(&ep, "chan_reads", RD_N / 2);
}

static void reads_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	stats_on();
	o.max_dest_rd_atomic = 64;
	hx_ep_open(&ep, &o, fd);
	hx_fill(ep.buf, o.buf_len, RD_SEED);
	hx_ep_connect(&ep);
	hx_sync(fd);
	hx_sync(fd);
	CHECK_EQ(hx_qp_state_wait(ep.qp, IBV_QPS_ERR, 3000), IBV_QPS_ERR);
	expect_counter(&ep, "chan_reads_served", RD_N / 2);
}

/* ---- lean ---------------------------------------------------------------- */

#define LN_N 400
#define LN_SRC 4096 /* B's pattern */
#define LN_DST (128 * 1024) /* A's landing area, 16 bytes a READ */
#define LN_SEED 23
#define LN_PAIRS 40 /* WRITE, READ, SEND */
#define LN_WAT (64 * 1024) /* B's words the pairs write and read */
#define LN_BAD 20 /* the READ with an unknown R_Key */
#define LN_AFTER 5

static uint32_t ln_len(int i)
{
	return (uint32_t)(i % 8) + 1;
}

static size_t ln_src(int i)
{
	return LN_SRC + 11 * (size_t)i + 1;
}

static uint64_t ln_val(int i)
{
	return 0x3c3c000000000000ull | ((uint64_t)i * 0x10203u + 1);
}

static int ln_read(struct hx_ep *ep, uint64_t id, int flags, uint8_t *dst,
		   uint32_t len, size_t src, uint32_t rkey)
{
	return hx_post_send(ep, IBV_WR_RDMA_READ, flags, id, dst, len,
			    ep->mr->lkey, ep->peer.addr + src, rkey, 0);
}

static void lean_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i, wrong = -1;
	uint8_t *d;

	stats_on();
	o.max_send_wr = 512;
	o.send_cqe = 1024;
	o.max_rd_atomic = 4;
	hx_ep_open(&ep, &o, fd);
	memset(ep.buf + LN_DST, 0xcc, 16 * LN_N);
	hx_ep_connect(&ep);
	hx_sync(fd); /* B's pattern and receives are in place */
	/* Rounds as many as max_rd_atomic: none waits for a result word
	 * (whether the peer answers within lean mode's wait is the
	 * machine's), so all but the first go by post_send. */
	for (i = 0; i < LN_N; i++) {
		HX_CHECK_RC(ln_read(&ep, (uint64_t)i,
				    i % 4 == 3 ? IBV_SEND_SIGNALED : 0,
				    ep.buf + LN_DST + 16 * i + 3, ln_len(i),
				    ln_src(i), ep.peer.rkey),
			    0);
		if (i % 4 == 3)
			HX_EXPECT_T(ep.scq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
				    IBV_WC_RDMA_READ, ln_len(i), 10000);
	}
	for (i = 0; i < LN_N && wrong < 0; i++) {
		d = ep.buf + LN_DST + 16 * i;
		for (uint32_t j = 0; j < 16; j++) {
			uint8_t want =
				j >= 3 && j < 3 + ln_len(i) ?
					hx_pattern_byte(LN_SEED,
							ln_src(i) + j - 3) :
					0xcc;

			if (d[j] != want) {
				hx_log("READ %d byte %u: %#x, want %#x", i, j,
				       d[j], want);
				wrong = i;
				break;
			}
		}
	}
	CHECK_EQ(wrong, -1);
	/* WRITE, READ of it, SEND: in the channel's order. */
	memset(ep.buf + 8192, 0, 8 * LN_PAIRS);
	for (i = 0; i < LN_PAIRS; i++) {
		put64(ep.buf + 8 * i, ln_val(i));
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0,
					 1000 + (uint64_t)i, ep.buf + 8 * i, 8,
					 ep.mr->lkey,
					 ep.peer.addr + LN_WAT + 8 * i,
					 ep.peer.rkey, 0),
			    0);
		HX_CHECK_RC(ln_read(&ep, 2000 + (uint64_t)i, 0,
				    ep.buf + 8192 + 8 * i, 8, LN_WAT + 8 * i,
				    ep.peer.rkey),
			    0);
		put64(ep.buf + 4096 + 8 * i, (uint64_t)i);
		HX_CHECK_RC(
			hx_post_send(&ep, IBV_WR_SEND,
				     i == LN_PAIRS - 1 ? IBV_SEND_SIGNALED : 0,
				     3000 + (uint64_t)i, ep.buf + 4096 + 8 * i,
				     8, ep.mr->lkey, 0, 0, 0),
			0);
	}
	HX_EXPECT(ep.scq, NULL, 3000 + LN_PAIRS - 1, IBV_WC_SUCCESS,
		  IBV_WC_SEND, -1);
	for (i = 0; i < LN_PAIRS; i++)
		CHECK_EQ(get64(ep.buf + 8192 + 8 * i), ln_val(i));
	/* A fenced SEND after READs. */
	for (i = 0; i < 8; i++)
		HX_CHECK_RC(ln_read(&ep, 4000 + (uint64_t)i, 0,
				    ep.buf + 8192 + 8 * i, 8, ln_src(i),
				    ep.peer.rkey),
			    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND,
				 IBV_SEND_SIGNALED | IBV_SEND_FENCE, 4100,
				 ep.buf, 8, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 4100, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	for (i = 0; i < 8; i++)
		CHECK_EQ(memcmp(ep.buf + 8192 + 8 * i,
				(const uint8_t[8]){
					hx_pattern_byte(LN_SEED, ln_src(i)),
					hx_pattern_byte(LN_SEED, ln_src(i) + 1),
					hx_pattern_byte(LN_SEED, ln_src(i) + 2),
					hx_pattern_byte(LN_SEED, ln_src(i) + 3),
					hx_pattern_byte(LN_SEED, ln_src(i) + 4),
					hx_pattern_byte(LN_SEED, ln_src(i) + 5),
					hx_pattern_byte(LN_SEED, ln_src(i) + 6),
					hx_pattern_byte(LN_SEED, ln_src(i) + 7),
				},
				8),
			 0);
	/* An unknown R_Key in the middle of a run. */
	memset(ep.buf + LN_DST, 0xcc, 16 * (LN_BAD + 1 + LN_AFTER));
	for (i = 0; i <= LN_BAD + LN_AFTER; i++)
		HX_CHECK_RC(ln_read(&ep, 5000 + (uint64_t)i,
				    i > LN_BAD ? IBV_SEND_SIGNALED : 0,
				    ep.buf + LN_DST + 16 * i, 8, ln_src(i),
				    ep.peer.rkey + (i == LN_BAD ? 0x100 : 0)),
			    0);
	HX_EXPECT(ep.scq, NULL, 5000 + LN_BAD, IBV_WC_REM_ACCESS_ERR, -1, -1);
	for (i = LN_BAD + 1; i <= LN_BAD + LN_AFTER; i++)
		HX_EXPECT(ep.scq, NULL, 5000 + (uint64_t)i, IBV_WC_WR_FLUSH_ERR,
			  -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	for (i = 0; i <= LN_BAD + LN_AFTER; i++) {
		d = ep.buf + LN_DST + 16 * i;
		if (i < LN_BAD)
			CHECK_EQ(d[7], hx_pattern_byte(LN_SEED, ln_src(i) + 7));
		else
			CHECK_EQ(d[7], 0xcc);
		CHECK_EQ(d[8], 0xcc);
	}
	hx_sync(fd);
	expect_counter(&ep, "chan_reads_lean", LN_N / 2);
}

static void lean_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i, wrong = -1;

	stats_on();
	o.max_recv_wr = 64;
	hx_ep_open(&ep, &o, fd);
	hx_fill(ep.buf, o.buf_len, LN_SEED);
	hx_ep_connect(&ep);
	for (i = 0; i <= LN_PAIRS; i++) /* the pairs' SENDs, the fenced one */
		HX_CHECK_RC(hx_post_recv(&ep, (uint64_t)i,
					 ep.buf + 256 * 1024 + 64 * i, 64,
					 ep.mr->lkey),
			    0);
	hx_sync(fd);
	/* At each SEND, the WRITEs before it are in place. */
	for (i = 0; i < LN_PAIRS && wrong < 0; i++) {
		HX_EXPECT_T(ep.rcq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
			    IBV_WC_RECV, 8, 10000);
		if (get64(ep.buf + LN_WAT + 8 * i) != ln_val(i) ||
		    get64(ep.buf + 256 * 1024 + 64 * i) != (uint64_t)i)
			wrong = i;
	}
	CHECK_EQ(wrong, -1);
	HX_EXPECT_T(ep.rcq, NULL, LN_PAIRS, IBV_WC_SUCCESS, IBV_WC_RECV, 8,
		    10000);
	hx_sync(fd);
	CHECK_EQ(hx_qp_state_wait(ep.qp, IBV_QPS_ERR, 3000), IBV_QPS_ERR);
	expect_counter(&ep, "chan_reads_served", LN_N);
}

/* ---- stopped -------------------------------------------------------------- */

#define ST_N 32
#define ST_AFTER 512 /* after SIGCONT, in rounds of 64 */
#define ST_AT 4096

static uint64_t st_val(int i)
{
	return 0x1111111111111111ull * (uint64_t)(i % 15 + 1) + (uint64_t)i;
}

static void stopped_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct counters c;
	struct hx_ep ep;
	pid_t pid;
	int i;

	stats_on();
	o.max_inline = 64;
	o.max_send_wr = 128;
	o.send_cqe = 256;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	pid = (pid_t)hx_recv_u64(fd);
	hx_sync(fd); /* B's receive is posted */
	REQUIRE(kill(pid, SIGSTOP) == 0);
	REQUIRE(hx_wait_stopped(pid));
	for (i = 0; i < ST_N; i++) {
		put64(ep.buf + 8 * i, st_val(i));
		HX_CHECK_RC(
			hx_post_send(
				&ep, IBV_WR_RDMA_WRITE,
				(i & 1 ? IBV_SEND_INLINE : 0) |
					(i == ST_N - 1 ? IBV_SEND_SIGNALED : 0),
				(uint64_t)i, ep.buf + 8 * i, 8, ep.mr->lkey,
				ep.peer.addr + ST_AT + 8 * i, ep.peer.rkey, 0),
			0);
	}
	/* READs of what they wrote, unsignaled but the last, in the
	 * channel behind them. */
	memset(ep.buf + 8192, 0, 8 * 8);
	for (i = 0; i < 8; i++)
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ,
					 i == 7 ? IBV_SEND_SIGNALED : 0,
					 500 + (uint64_t)i,
					 ep.buf + 8192 + 8 * i, 8, ep.mr->lkey,
					 ep.peer.addr + ST_AT + 8 * i,
					 ep.peer.rkey, 0),
			    0);
	HX_EXPECT_T(ep.scq, NULL, ST_N - 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		    8, 5000);
	HX_EXPECT_T(ep.scq, NULL, 507, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 8,
		    5000);
	for (i = 0; i < 8; i++)
		CHECK_EQ(get64(ep.buf + 8192 + 8 * i), st_val(i));
	REQUIRE(kill(pid, SIGCONT) == 0);
	/* Its engine opens the channel anew when it runs again. */
	hx_msleep(100);
	for (i = ST_N; i < ST_N + ST_AFTER; i++) {
		put64(ep.buf + 8 * i, st_val(i));
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 i % 64 == 63 ? IBV_SEND_SIGNALED : 0,
					 (uint64_t)i, ep.buf + 8 * i, 8,
					 ep.mr->lkey,
					 ep.peer.addr + ST_AT + 8 * i,
					 ep.peer.rkey, 0),
			    0);
		if (i % 64 == 63)
			HX_EXPECT(ep.scq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
				  IBV_WC_RDMA_WRITE, 8);
	}
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 9999,
				 ep.buf, 8, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 9999, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	hx_sync(fd); /* B checked */
	hx_ep_close_counters(&ep, counter_names, c.v);
	/* Taken back while it was stopped, WRITEs and READs, the channel
	 * again after. */
	CHECK(counter(&c, "chan_writes_taken") >= ST_N + 8);
	CHECK(counter(&c, "chan_reads") >= 8);
	CHECK(counter(&c, "chan_writes") >= ST_N + 64);
}

static void stopped_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i, wrong = -1;

	stats_on();
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf, 64, ep.mr->lkey), 0);
	hx_send_u64(fd, (uint64_t)getpid());
	hx_sync(fd);
	HX_EXPECT_T(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 8, 20000);
	for (i = 0; i < ST_N + ST_AFTER && wrong < 0; i++)
		if (get64(ep.buf + ST_AT + 8 * i) != st_val(i))
			wrong = i;
	CHECK_EQ(wrong, -1);
	hx_sync(fd);
	CHECK(hx_ep_close_counter(&ep, "chan_writes_served") >= 64);
}

static const struct hx_case cases[] = {
	HX_CASE(bytes, 60),   HX_CASE(order, 60),
	HX_CASE(errors, 60),  HX_CASE(dereg, 60),
	HX_CASE(reads, 60),   HX_CASE(lean, 60),
	HX_CASE(stopped, 60), { 0 }
};

static int done(void)
{
	printf("[%s] ", hx_role);
	return check_done();
}

int main(int argc, char **argv)
{
	/* A stopped target answers no packet: only the fast path can pass
	 * that case. */
	if (argc > 1 && !strcmp(argv[1], "stopped") &&
	    !hx_fastpath_expected()) {
		printf("SKIP: the fast path is off here\n");
		return 77;
	}
	return hx_main(argc, argv, cases, done);
}
