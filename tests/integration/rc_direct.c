/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * One-copy placement between two processes of this host (docs/fastpath.md,
 * layer 2: paths/direct.c, core/pubtab.c):
 *   stopped  the target is SIGSTOPped while the initiator's 1 MiB RDMA
 *            WRITE and READ (and a burst of small and inline WRITEs,
 *            which go through the target's /proc/PID/mem: direct_memfile)
 *            complete with the right bytes: only possible when the data
 *            moves without the target's help (skipped, 77, when the fast
 *            path is off: SOFTVERBS_FASTPATH=0 or no ptrace permission);
 *   errors   wrong rkey, an MR of another PD, out of bounds, MRs without
 *            REMOTE_WRITE / REMOTE_READ, a QP without the access flag:
 *            IBV_WC_REM_ACCESS_ERR and both QPs in ERR exactly as on UDP,
 *            target memory unchanged; then a good WRITE/READ pair works;
 *   dereg    the target deregisters the MR (and registers the same memory
 *            again under a new key) while the initiator writes in a loop
 *            (64 KiB, and every 4th 512 KiB, which the target helps with):
 *            the next write fails with REM_ACCESS_ERR and, after
 *            ibv_dereg_mr returned, no byte of the memory changes;
 *   order    a SEND after 128 WRITEs (unsignaled but every 16th) and an
 *            inline one: when the SEND arrives every written byte is in
 *            place; READ gives the bytes back;
 *   help     large WRITEs while the target idles, which its progress
 *            thread helps to copy (paths/help.c): one of three SGEs of
 *            odd lengths to an odd remote offset, then a stream of 40
 *            WRITEs of 4 MiB + 1 alternating between two regions, each
 *            with its own pattern: every byte right, the last one last
 *            (the target's copy of the final bytes); at least one was
 *            posted as a job and taken (unless SOFTVERBS_HELP=0) - not
 *            every one: after two that found no helper (a loaded
 *            machine) a QP offers the next 16 to nobody;
 *   stopstream  a thread of the initiator stops and continues the target
 *            40 times while the initiator streams 4 MiB WRITEs: each
 *            completes within 3 s even when the target stops with chunks
 *            its thread had claimed (the sender revokes them and copies
 *            them itself: help_revoked), every byte right, and no byte
 *            lands after the completion (the sources are overwritten at
 *            the end: the target's memory keeps the last WRITEs).
 * Each case checks the initiator's counters (SOFTVERBS_STATS at close):
 * direct_write / direct_read > 0 when the fast path is on, all direct
 * counters 0 with SOFTVERBS_FASTPATH=0.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

#include "harness.h"

#define MIB (1u << 20)
#define ALL_REMOTE                                          \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	 IBV_ACCESS_REMOTE_ATOMIC)

/* ---- counters ----------------------------------------------------------- */

struct direct_stats {
	unsigned long long write, read, fallback, memfile;
	unsigned long long help_posted, help_taken, help_revoked;
};

/* Close everything with SOFTVERBS_STATS=1 (set before the device was
 * opened) and read the engine's counters from what it prints. */
static void close_with_stats(struct hx_ep *ep, struct direct_stats *st)
{
	static const char *const names[] = {
		"direct_write",	  "direct_read", "direct_fallback",
		"direct_memfile", "help_posted", "help_taken",
		"help_revoked",	  NULL
	};
	unsigned long long v[7];

	hx_ep_close_counters(ep, names, v);
	st->write = v[0];
	st->read = v[1];
	st->fallback = v[2];
	st->memfile = v[3];
	st->help_posted = v[4];
	st->help_taken = v[5];
	st->help_revoked = v[6];
}

static void expect_direct(const struct direct_stats *st, unsigned min_w,
			  unsigned min_r, unsigned min_fb)
{
	if (!hx_fastpath_expected()) {
		CHECK_EQ(st->write + st->read + st->fallback + st->memfile +
				 st->help_posted,
			 0);
		return;
	}
	CHECK(st->write >= min_w);
	CHECK(st->read >= min_r);
	CHECK(st->fallback >= min_fb);
}

static void stats_on(void)
{
	setenv("SOFTVERBS_STATS", "1", 1);
}

/* ---- stopped ------------------------------------------------------------- */

static void stopped_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct direct_stats st;
	struct hx_ep ep;
	pid_t pid;
	int i;

	stats_on();
	o.buf_len = 2 * MIB;
	o.max_inline = 64;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	pid = (pid_t)hx_recv_u64(fd);
	hx_sync(fd); /* B's memory is ready */
	REQUIRE(kill(pid, SIGSTOP) == 0);
	REQUIRE(hx_wait_stopped(pid));

	/* 1 MiB WRITE into the stopped process. */
	hx_fill(ep.buf, MIB, 11);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 1,
				 ep.buf, MIB, ep.mr->lkey, ep.peer.addr,
				 ep.peer.rkey, 0),
		    0);
	HX_EXPECT_T(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, MIB,
		    5000);
	/* 1 MiB READ out of it. */
	memset(ep.buf + MIB, 0, MIB);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 2,
				 ep.buf + MIB, MIB, ep.mr->lkey,
				 ep.peer.addr + MIB, ep.peer.rkey, 0),
		    0);
	HX_EXPECT_T(ep.scq, NULL, 2, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, MIB,
		    5000);
	HX_CHECK_PATTERN(ep.buf + MIB, MIB, 22);
	/* Small WRITEs, unsignaled but the last, and inline ones: 8 bytes
	 * each at the start of the second MiB's last page. */
	for (i = 0; i < 32; i++) {
		uint64_t v = 0x1111111111111111ull * (uint64_t)(i % 15 + 1);

		memcpy(ep.buf + 4096 + 8 * i, &v, 8);
		HX_CHECK_RC(
			hx_post_send(&ep, IBV_WR_RDMA_WRITE,
				     (i & 1 ? IBV_SEND_INLINE : 0) |
					     (i == 31 ? IBV_SEND_SIGNALED : 0),
				     100 + i, ep.buf + 4096 + 8 * i, 8,
				     ep.mr->lkey,
				     ep.peer.addr + 2 * MIB - 4096 + 8 * i,
				     ep.peer.rkey, 0),
			0);
	}
	HX_EXPECT_T(ep.scq, NULL, 131, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 8,
		    5000);

	REQUIRE(kill(pid, SIGCONT) == 0);
	hx_send_u64(fd, 1);
	hx_sync(fd); /* B checked */
	close_with_stats(&ep, &st);
	expect_direct(&st, 33, 1, 0);
	/* The 32 small WRITEs went through the target's mem file, the
	 * 1 MiB WRITE and READ through process_vm_writev/readv. */
	if (hx_fastpath_expected())
		CHECK_EQ(st.memfile, 32);
}

static void stopped_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	int i, ok = 1;

	o.buf_len = 2 * MIB;
	o.max_inline = 64;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	memset(ep.buf, 0, MIB);
	hx_fill(ep.buf + MIB, MIB, 22);
	hx_send_u64(fd, (uint64_t)getpid());
	hx_sync(fd);
	/* Stopped here; A tells us when it is done. */
	CHECK_EQ(hx_recv_u64(fd), 1);
	HX_CHECK_PATTERN(ep.buf, MIB, 11);
	for (i = 0; i < 32; i++) {
		uint64_t v = 0x1111111111111111ull * (uint64_t)(i % 15 + 1), g;

		memcpy(&g, ep.buf + 2 * MIB - 4096 + 8 * i, 8);
		if (g != v)
			ok = 0;
	}
	CHECK(ok);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- errors ---------------------------------------------------------------- */

static void drain_cqs(struct hx_ep *ep)
{
	struct ibv_wc wc[16];

	while (hx_poll(ep->scq, wc, 16, 30) > 0)
		;
}

static void renew(struct hx_ep *ep)
{
	hx_sync(ep->fd);
	drain_cqs(ep);
	hx_ep_new_qp(ep);
	hx_ep_connect(ep);
}

enum { K_MAIN, K_PD2, K_NOW, K_NOR, NKEYS };
#define SUB (64u * 1024)

struct keys {
	uint64_t addr[NKEYS];
	uint32_t rkey[NKEYS];
};

static const struct err_case {
	const char *what;
	enum ibv_wr_opcode op;
	int key;
	int64_t off;
	uint32_t len;
	bool badkey;
	int qp_access; /* B's QP access flags (0: all) */
} errs[] = {
	{ "WRITE, wrong rkey", IBV_WR_RDMA_WRITE, K_MAIN, 0, 4096, true, 0 },
	{ "READ, wrong rkey", IBV_WR_RDMA_READ, K_MAIN, 0, 4096, true, 0 },
	{ "WRITE, MR of another PD", IBV_WR_RDMA_WRITE, K_PD2, 0, 4096, false,
	  0 },
	{ "READ, MR of another PD", IBV_WR_RDMA_READ, K_PD2, 0, 4096, false,
	  0 },
	{ "WRITE, one byte past the end", IBV_WR_RDMA_WRITE, K_MAIN, SUB - 4095,
	  4096, false, 0 },
	{ "WRITE, one byte before the start", IBV_WR_RDMA_WRITE, K_MAIN, -1,
	  4096, false, 0 },
	{ "READ, past the end", IBV_WR_RDMA_READ, K_MAIN, 8, SUB, false, 0 },
	{ "WRITE, MR without REMOTE_WRITE", IBV_WR_RDMA_WRITE, K_NOW, 0, 4096,
	  false, 0 },
	{ "READ, MR without REMOTE_READ", IBV_WR_RDMA_READ, K_NOR, 0, 4096,
	  false, 0 },
	{ "WRITE, QP without REMOTE_WRITE", IBV_WR_RDMA_WRITE, K_MAIN, 0, 4096,
	  false, IBV_ACCESS_REMOTE_READ },
	{ "READ, QP without REMOTE_READ", IBV_WR_RDMA_READ, K_MAIN, 0, 4096,
	  false, IBV_ACCESS_REMOTE_WRITE },
};
#define N_ERRS (int)(sizeof(errs) / sizeof(errs[0]))

static void errors_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct direct_stats st;
	struct hx_ep ep;
	struct keys k;
	int i;

	stats_on();
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_recv(fd, &k, sizeof(k));
	hx_fill(ep.buf, SUB, 5);
	for (i = 0; i < N_ERRS; i++) {
		const struct err_case *c = &errs[i];
		bool rd = c->op == IBV_WR_RDMA_READ;

		renew(&ep);
		hx_sync(fd);
		HX_CHECK_RC(hx_post_send(
				    &ep, c->op, IBV_SEND_SIGNALED, i,
				    ep.buf + (rd ? 2 * SUB : 0), c->len,
				    ep.mr->lkey,
				    k.addr[c->key] + (uint64_t)c->off,
				    k.rkey[c->key] ^ (c->badkey ? 0x10 : 0), 0),
			    0);
		if (!HX_EXPECT(ep.scq, NULL, (uint64_t)i, IBV_WC_REM_ACCESS_ERR,
			       -1, -1))
			hx_log("case %d: %s", i, c->what);
		HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
		hx_sync(fd); /* B checks its QP and memory */
	}
	/* And a good pair on a fresh QP. */
	renew(&ep);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED, 50,
				 ep.buf, SUB, ep.mr->lkey, k.addr[K_MAIN],
				 k.rkey[K_MAIN], 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 50, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, SUB);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 51,
				 ep.buf + 4 * SUB, SUB, ep.mr->lkey,
				 k.addr[K_MAIN], k.rkey[K_MAIN], 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 51, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, SUB);
	HX_CHECK_PATTERN(ep.buf + 4 * SUB, SUB, 5);
	hx_sync(fd);
	close_with_stats(&ep, &st);
	/* Every refused case was a candidate left to the packet path. */
	expect_direct(&st, 1, 1, N_ERRS);
}

static void errors_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_mr *pd2mr, *now, *nor;
	struct ibv_pd *pd2;
	struct hx_ep ep;
	struct keys k;
	int i;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	/* Four MRs of 64 KiB side by side; one in another PD. */
	CHECK_EQ(ibv_dereg_mr(ep.mr), 0);
	ep.mr = ibv_reg_mr(ep.pd, ep.buf, SUB,
			   IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
	pd2 = ibv_alloc_pd(ep.ctx);
	REQUIRE(pd2);
	pd2mr = ibv_reg_mr(pd2, ep.buf + SUB, SUB,
			   IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
	now = ibv_reg_mr(ep.pd, ep.buf + 2 * SUB, SUB,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	nor = ibv_reg_mr(ep.pd, ep.buf + 3 * SUB, SUB,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	REQUIRE(ep.mr && pd2mr && now && nor);
	struct ibv_mr *mrs[NKEYS] = { ep.mr, pd2mr, now, nor };
	for (i = 0; i < NKEYS; i++) {
		k.addr[i] = (uintptr_t)mrs[i]->addr;
		k.rkey[i] = mrs[i]->rkey;
	}
	hx_send(fd, &k, sizeof(k));
	hx_fill(ep.buf, 4 * SUB, 900);
	for (i = 0; i < N_ERRS; i++) {
		ep.o.qp_access =
			errs[i].qp_access ? errs[i].qp_access : ALL_REMOTE;
		renew(&ep);
		hx_sync(fd);
		hx_sync(fd);
		/* The responder saw the access error too (on either path the
		 * request reached it) and its memory is untouched. */
		HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
		HX_CHECK_PATTERN(ep.buf, 4 * SUB, 900);
	}
	ep.o.qp_access = ALL_REMOTE;
	renew(&ep);
	hx_sync(fd);
	HX_CHECK_PATTERN(ep.buf, SUB, 5);
	CHECK_EQ(ibv_dereg_mr(pd2mr), 0);
	CHECK_EQ(ibv_dereg_mr(now), 0);
	CHECK_EQ(ibv_dereg_mr(nor), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- dereg while a peer writes ------------------------------------------------ */

static void dereg_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct direct_stats st;
	struct hx_ep ep;
	uint64_t i, t0, ok = 0;
	bool failed = false;

	stats_on();
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	t0 = hx_now_ms();
	for (i = 0; !failed && hx_now_ms() - t0 < 20000; i++) {
		struct ibv_wc wc;

		/* A new pattern each time: a late write would show.  Every
		 * 4th WRITE is large, so that the target's thread helps
		 * (help.c) and holds its own entry when the MR goes. */
		bool big = i % 4 == 3;
		uint32_t len = big ? 512 * 1024 : 65536;

		hx_fill(ep.buf, big ? len : 4096, 1000 + i);
		HX_CHECK_RC(
			hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED,
				     i, ep.buf, len, ep.mr->lkey,
				     ep.peer.addr + (big ? (i / 4 % 2) * len :
							   (i % 16) * 65536),
				     ep.peer.rkey, 0),
			0);
		if (hx_poll(ep.scq, &wc, 1, 10000) != 1) {
			CHECK(!"write completion");
			break;
		}
		if (wc.status == IBV_WC_SUCCESS) {
			ok++;
			continue;
		}
		failed = true;
		CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
		CHECK_EQ(wc.wr_id, i);
	}
	CHECK(failed);
	CHECK(ok > 10);
	hx_log("%llu writes before the dereg", (unsigned long long)ok);
	hx_sync(fd);
	close_with_stats(&ep, &st);
	expect_direct(&st, 10, 0, 1);
}

static void dereg_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	struct ibv_mr *again;
	uint8_t *snap;
	int64_t diff;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	snap = malloc(o.buf_len);
	REQUIRE(snap);
	hx_sync(fd);
	hx_msleep(200);
	CHECK_EQ(ibv_dereg_mr(ep.mr), 0);
	/* From here on nothing may change the memory... */
	memcpy(snap, ep.buf, o.buf_len);
	/* ...not even once the same pages are registered again (new keys). */
	again = ibv_reg_mr(ep.pd, ep.buf, o.buf_len,
			   IBV_ACCESS_LOCAL_WRITE | ALL_REMOTE);
	ep.mr = again;
	REQUIRE(again);
	CHECK(again->rkey != ep.peer.rkey);
	hx_msleep(300);
	diff = -1;
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

/* ---- order -------------------------------------------------------------------- */

static void order_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct direct_stats st;
	struct hx_ep ep;
	uint64_t v = 0x0123456789abcdefull;
	int i;

	stats_on();
	/* The one-copy path's order (channel WRITEs: rc_chan_write). */
	setenv("SOFTVERBS_CHAN_WRITE", "0", 1);
	o.buf_len = 2 * MIB;
	o.max_inline = 64;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_fill(ep.buf, 512 * 1024, 77);
	hx_sync(fd); /* B posted its receive */
	for (i = 0; i < 128; i++) {
		bool sig = i % 16 == 15;

		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 sig ? IBV_SEND_SIGNALED : 0, i,
					 ep.buf + 4096 * i, 4096, ep.mr->lkey,
					 ep.peer.addr + 4096 * i, ep.peer.rkey,
					 0),
			    0);
		if (sig)
			HX_EXPECT(ep.scq, NULL, (uint64_t)i, IBV_WC_SUCCESS,
				  IBV_WC_RDMA_WRITE, 4096);
	}
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, IBV_SEND_INLINE, 200,
				 &v, 8, 0, ep.peer.addr + 512 * 1024,
				 ep.peer.rkey, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND, IBV_SEND_SIGNALED, 201,
				 ep.buf, 100, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 201, IBV_WC_SUCCESS, IBV_WC_SEND, 100);
	memset(ep.buf + 512 * 1024, 0, 512 * 1024 + 8);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED, 202,
				 ep.buf + 512 * 1024, 512 * 1024 + 8,
				 ep.mr->lkey, ep.peer.addr, ep.peer.rkey, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 202, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		  512 * 1024 + 8);
	HX_CHECK_PATTERN(ep.buf + 512 * 1024, 512 * 1024, 77);
	CHECK(!memcmp(ep.buf + MIB, &v, 8));
	hx_sync(fd);
	close_with_stats(&ep, &st);
	expect_direct(&st, 129, 1, 0);
}

static void order_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	uint64_t v = 0x0123456789abcdefull;

	o.buf_len = 2 * MIB;
	o.max_inline = 64;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	HX_CHECK_RC(hx_post_recv(&ep, 1, ep.buf + MIB, 4096, ep.mr->lkey), 0);
	hx_sync(fd);
	HX_EXPECT(ep.rcq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 100);
	/* Everything posted before the SEND is in place when it arrives. */
	HX_CHECK_PATTERN(ep.buf, 512 * 1024, 77);
	CHECK(!memcmp(ep.buf + 512 * 1024, &v, 8));
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- help: large WRITEs the target's thread helps with ------------------------ */

#define HELP_SRC (6 * MIB) /* A: the source, filled with one pattern */
#define HELP_STREAM (4 * MIB + 1)
#define HELP_N 40
/* The three SGEs of the first WRITE (offset, length in A's buffer), and
 * where it lands in B's. */
static const size_t help_sge[3][2] = { { 0, 100000 },
				       { 2 * MIB + 3, MIB },
				       { 5 * MIB, 77777 } };
#define HELP_DST 12345

static bool help_expected(void)
{
	const char *s = getenv("SOFTVERBS_HELP");

	return hx_fastpath_expected() && !(s && !strcmp(s, "0"));
}

static void help_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge[3];
	struct direct_stats st;
	struct hx_ep ep;
	int i;

	stats_on();
	o.buf_len = HELP_SRC + 2 * HELP_STREAM;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd); /* B is idle in a blocking read from here on */

	hx_fill(ep.buf, HELP_SRC, 31);
	for (i = 0; i < 3; i++) {
		sge[i].addr = (uintptr_t)ep.buf + help_sge[i][0];
		sge[i].length = (uint32_t)help_sge[i][1];
		sge[i].lkey = ep.mr->lkey;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = sge;
	wr.num_sge = 3;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = ep.peer.addr + HELP_DST;
	wr.wr.rdma.rkey = ep.peer.rkey;
	HX_CHECK_RC(ibv_post_send(ep.qp, &wr, &bad), 0);
	HX_EXPECT_T(ep.scq, NULL, 1, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
		    100000 + MIB + 77777, 10000);

	/* The stream: WRITE i carries pattern 100 + i into region i % 2 of
	 * B; the sources alternate too, so one is refilled while the other
	 * may still be in flight only after its completion was seen. */
	for (i = 0; i < HELP_N; i++) {
		uint8_t *src =
			ep.buf + HELP_SRC + (size_t)(i % 2) * HELP_STREAM;
		bool sig = i % 2 == 1 || i == HELP_N - 1;

		hx_fill(src, HELP_STREAM, 100 + (uint64_t)i);
		HX_CHECK_RC(
			hx_post_send(&ep, IBV_WR_RDMA_WRITE,
				     sig ? IBV_SEND_SIGNALED : 0,
				     10 + (uint64_t)i, src, HELP_STREAM,
				     ep.mr->lkey,
				     ep.peer.addr + HELP_SRC +
					     (uint64_t)(i % 2) * HELP_STREAM,
				     ep.peer.rkey, 0),
			0);
		if (sig)
			HX_EXPECT_T(ep.scq, NULL, 10 + (uint64_t)i,
				    IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
				    HELP_STREAM, 10000);
	}
	hx_send_u64(fd, 1);
	hx_sync(fd); /* B checked */
	close_with_stats(&ep, &st);
	expect_direct(&st, 1 + HELP_N, 0, 0);
	if (help_expected()) {
		CHECK(st.help_posted >= 1 && st.help_posted <= 1 + HELP_N);
		CHECK(st.help_taken >= 1 && st.help_taken <= st.help_posted);
	} else {
		CHECK_EQ(st.help_posted, 0);
	}
}

static void help_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	uint8_t *want = malloc(HELP_SRC);
	struct hx_ep ep;
	size_t at = HELP_DST;
	int i;

	REQUIRE(want);
	o.buf_len = HELP_SRC + 2 * HELP_STREAM;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_sync(fd);
	CHECK_EQ(hx_recv_u64(fd), 1);
	hx_fill(want, HELP_SRC, 31);
	for (i = 0; i < 3; i++) {
		CHECK(!memcmp(ep.buf + at, want + help_sge[i][0],
			      help_sge[i][1]));
		at += help_sge[i][1];
	}
	CHECK_EQ(ep.buf[HELP_DST - 1], 0);
	CHECK_EQ(ep.buf[at], 0);
	/* Each region holds the last WRITE made into it. */
	HX_CHECK_PATTERN(ep.buf + HELP_SRC, HELP_STREAM, 100 + HELP_N - 2);
	HX_CHECK_PATTERN(ep.buf + HELP_SRC + HELP_STREAM, HELP_STREAM,
			 100 + HELP_N - 1);
	free(want);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

/* ---- stopstream: the target stopped in the middle of helped WRITEs ------------ */

#define STOP_LEN (4 * MIB)
#define STOP_ROUNDS 40

struct stopper {
	pid_t pid;
	atomic_bool done;
	bool ok;
};

static void *stopper_main(void *arg)
{
	struct stopper *k = arg;
	unsigned int seed = (unsigned int)getpid();
	int i;

	k->ok = true;
	for (i = 0; i < STOP_ROUNDS && k->ok; i++) {
		struct timespec t = { 0, (long)(rand_r(&seed) % 2000) * 1000 };

		nanosleep(&t, NULL);
		if (kill(k->pid, SIGSTOP) || !hx_wait_stopped(k->pid))
			k->ok = false;
		hx_msleep(3);
		if (kill(k->pid, SIGCONT))
			k->ok = false;
	}
	atomic_store(&k->done, true);
	return NULL;
}

static void stopstream_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct stopper k = { 0 };
	struct direct_stats st;
	struct hx_ep ep;
	pthread_t th;
	uint64_t i;

	stats_on();
	o.buf_len = 2 * STOP_LEN;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	k.pid = (pid_t)hx_recv_u64(fd);
	hx_sync(fd); /* B is idle in a blocking read from here on */
	REQUIRE(pthread_create(&th, NULL, stopper_main, &k) == 0);
	/* WRITE i: pattern 500 + i from source i % 2 into region i % 2;
	 * a source is refilled only after its WRITE completed. */
	for (i = 0; !atomic_load(&k.done) || i < 4; i++) {
		uint8_t *src = ep.buf + (i % 2) * STOP_LEN;
		uint64_t t0 = hx_now_ms();

		hx_fill(src, STOP_LEN, 500 + i);
		HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE,
					 IBV_SEND_SIGNALED, i, src, STOP_LEN,
					 ep.mr->lkey,
					 ep.peer.addr + (i % 2) * STOP_LEN,
					 ep.peer.rkey, 0),
			    0);
		HX_EXPECT_T(ep.scq, NULL, i, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
			    STOP_LEN, 10000);
		if (hx_now_ms() - t0 > 3000) {
			CHECK(!"a WRITE waited for the stopped target");
			hx_log("WRITE %llu took %llu ms", (unsigned long long)i,
			       (unsigned long long)(hx_now_ms() - t0));
		}
	}
	pthread_join(th, NULL);
	CHECK(k.ok);
	/* Nothing may land after its completion: change both sources. */
	hx_fill(ep.buf, 2 * STOP_LEN, 9999);
	hx_msleep(50);
	hx_send_u64(fd, i);
	hx_sync(fd); /* B checked */
	close_with_stats(&ep, &st);
	hx_log("%llu WRITEs", (unsigned long long)i);
	expect_direct(&st, 4, 0, 0);
	/* With the target's thread in many of them, some stop must have
	 * caught it holding chunks (x86-64: the rseq copy). */
#if defined(__x86_64__)
	if (help_expected() && st.help_taken >= 20)
		CHECK(st.help_revoked >= 1);
#endif
}

static void stopstream_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;
	uint64_t n;

	o.buf_len = 2 * STOP_LEN;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_send_u64(fd, (uint64_t)getpid());
	hx_sync(fd);
	n = hx_recv_u64(fd); /* stopped and continued meanwhile */
	REQUIRE(n >= 4);
	HX_CHECK_PATTERN(ep.buf + ((n - 2) % 2) * STOP_LEN, STOP_LEN,
			 500 + n - 2);
	HX_CHECK_PATTERN(ep.buf + ((n - 1) % 2) * STOP_LEN, STOP_LEN,
			 500 + n - 1);
	hx_sync(fd);
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(stopped, 60),
	HX_CASE(errors, 90),
	HX_CASE(dereg, 60),
	HX_CASE(order, 60),
	HX_CASE(help, 90),
	HX_CASE(stopstream, 90),
	{ 0 },
};

static int done(void)
{
	printf("[%s] ", hx_role);
	return check_done();
}

int main(int argc, char **argv)
{
	/* A stopped target cannot answer packets: only the fast path can
	 * pass that case. */
	if (argc > 1 &&
	    (!strcmp(argv[1], "stopped") || !strcmp(argv[1], "stopstream")) &&
	    !hx_fastpath_expected()) {
		printf("SKIP: the one-copy path is off here\n");
		return 77;
	}
	return hx_main(argc, argv, cases, done);
}
