/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * RC atomics through message channels between two processes of this host
 * (docs/fastpath.md, "Atomics through channels": paths/chan_atomic.c).
 * A (requester) and B (target); every case also runs with
 * SOFTVERBS_FASTPATH=0 (UDP, the packet path) and must give the same
 * outcomes there:
 *   values   CMP_AND_SWP that succeeds and one that fails (memory
 *            unchanged), FETCH_AND_ADD, one that wraps; the result lands in
 *            its 8 bytes only; an atomic after a WRITE to its word sees
 *            the WRITE's bytes; a SEND fenced behind a FETCH_AND_ADD carries
 *            the fetched value (the fence waits for the result); then 3000
 *            FETCH_AND_ADDs with 16 outstanding on one word while B's own
 *            CPU adds to the same word: the exact total, and every result
 *            A got is in order for its half of the word (atomic with
 *            respect to the target's CPU too, not only to other atomics);
 *   errors   each on a fresh QP pair after a good atomic: an unknown R_Key,
 *            a VA past the region, a misaligned VA, a region without
 *            REMOTE_ATOMIC, a region of another PD, a QP without
 *            REMOTE_ATOMIC (REM_ACCESS_ERR or
 *            REM_INV_REQ_ERR, both QPs in ERR, the next WQE flushed, the
 *            word untouched), and a bad local lkey for the result
 *            (LOC_PROT_ERR, B's QP still in RTS); B explains and counts
 *            each reason;
 *   stopped  B is SIGSTOPped: an atomic completes with RETRY_EXC_ERR after
 *            the transport's retries, bounded, the QP in ERR.
 * Counters (SOFTVERBS_STATS at close): chan_atomics at A and
 * chan_atomics_served at B on the shm link, 0 with SOFTVERBS_FASTPATH=0.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

/* ---- counters ----------------------------------------------------------- */

static const char *const counter_names[] = {
	"chan_atomics",	      "chan_atomics_served",
	"access_no_key",      "access_bounds",
	"access_rights",      "access_qp_flags",
	"access_pd",	      "resp_inv_req",
	"retry_exceeded_err", NULL,
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

/* Close with SOFTVERBS_STATS=1 (set before the device was opened) and
 * read the engine's counters. */
static void close_counting(struct hx_ep *ep, struct counters *c)
{
	hx_ep_close_counters(ep, counter_names, c->v);
}

/* At least min through channels on the shm link, none over UDP. */
static void expect_counter(const struct counters *c, const char *name,
			   unsigned long long min)
{
	if (!hx_fastpath_expected()) {
		CHECK_EQ(counter(c, "chan_atomics") +
				 counter(c, "chan_atomics_served"),
			 0);
		return;
	}
	if (counter(c, name) < min)
		hx_log("%s: %llu, want >= %llu", name, counter(c, name), min);
	CHECK(counter(c, name) >= min);
}

static void stats_on(void)
{
	setenv("SOFTVERBS_STATS", "1", 1);
}

static bool atomic_ok(struct hx_ep *ep, enum ibv_wr_opcode op, uint64_t id,
		      uint64_t *res, uint64_t raddr, uint64_t ca, uint64_t swap)
{
	HX_CHECK_RC(hx_post_atomic(ep, op, IBV_SEND_SIGNALED, id, res,
				   ep->mr->lkey, raddr, ep->peer.rkey, ca,
				   swap),
		    0);
	return HX_EXPECT(ep->scq, NULL, id, IBV_WC_SUCCESS,
			 op == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP :
							   IBV_WC_FETCH_ADD,
			 8);
}

/* ---- values ---------------------------------------------------------------- */

#define W1_INIT 0x1122334455667788ull
#define W4_WRITTEN 0x0102030405060708ull
#define N_STREAM 3000
#define WINDOW 16
#define FILLER 0xababababababababull

static void values_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct ibv_wc wc[WINDOW];
	struct counters c;
	struct hx_ep ep;
	uint64_t *r, *stream, w0, w1, w2, w3, w4;
	int posted = 0, done = 0, bad = 0;

	stats_on();
	o.max_send_wr = 2 * WINDOW;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	w0 = ep.peer.addr, w1 = w0 + 8, w2 = w0 + 16, w3 = w0 + 64;
	w4 = w0 + 24;
	r = (uint64_t *)ep.buf;
	for (int i = 0; i < 16; i++)
		r[i] = FILLER;
	hx_sync(fd); /* B set its words */

	/* CAS that succeeds, then one that fails. */
	atomic_ok(&ep, IBV_WR_ATOMIC_CMP_AND_SWP, 1, &r[0], w0, 5, 9);
	CHECK_EQ(r[0], 5);
	atomic_ok(&ep, IBV_WR_ATOMIC_CMP_AND_SWP, 2, &r[2], w0, 5, 11);
	CHECK_EQ(r[2], 9);
	atomic_ok(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD, 3, &r[4], w1, 0x10, 0);
	CHECK_EQ(r[4], W1_INIT);
	atomic_ok(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, &r[6], w2, 3, 0);
	CHECK_EQ(r[6], UINT64_MAX - 1);
	/* Only the 8 result bytes were written. */
	CHECK_EQ(r[1], FILLER);
	CHECK_EQ(r[3], FILLER);
	CHECK_EQ(r[5], FILLER);
	CHECK_EQ(r[7], FILLER);

	/* A WRITE then an atomic on the word it wrote: the atomic sees it. */
	r[10] = W4_WRITTEN;
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_RDMA_WRITE, 0, 7, &r[10], 8,
				 ep.mr->lkey, w4, ep.peer.rkey, 0),
		    0);
	atomic_ok(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, &r[12], w4, 1, 0);
	CHECK_EQ(r[12], W4_WRITTEN);

	/* A SEND fenced behind an atomic carries its result. */
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 5,
				   &r[8], ep.mr->lkey, w1, ep.peer.rkey, 1, 0),
		    0);
	HX_CHECK_RC(hx_post_send(&ep, IBV_WR_SEND,
				 IBV_SEND_SIGNALED | IBV_SEND_FENCE, 6, &r[8],
				 8, ep.mr->lkey, 0, 0, 0),
		    0);
	HX_EXPECT(ep.scq, NULL, 6, IBV_WC_SUCCESS, IBV_WC_SEND, -1);
	CHECK_EQ(r[8], W1_INIT + 0x10);

	/* The stream: A adds 1 to the low half of w3, B's CPU adds to the
	 * high half meanwhile. */
	stream = (uint64_t *)(ep.buf + 4096);
	hx_sync(fd);
	while (done < N_STREAM) {
		while (posted < N_STREAM && posted - done < WINDOW) {
			if (hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
					   IBV_SEND_SIGNALED, 100 + posted,
					   &stream[posted], ep.mr->lkey, w3,
					   ep.peer.rkey, 1, 0)) {
				CHECK(!"post_send");
				goto out;
			}
			posted++;
		}
		if (hx_poll(ep.scq, wc, 1, 10000) != 1) {
			CHECK(!"fetch-add completion timed out");
			goto out;
		}
		if (wc[0].status != IBV_WC_SUCCESS ||
		    wc[0].wr_id != (uint64_t)(100 + done)) {
			hx_log("fetch-add %d: wr_id %llu status %s", done,
			       (unsigned long long)wc[0].wr_id,
			       ibv_wc_status_str(wc[0].status));
			CHECK(0);
			goto out;
		}
		done++;
	}
	for (int i = 0; i < N_STREAM; i++)
		bad += (uint32_t)stream[i] != (uint32_t)i;
	if (bad)
		hx_log("%d stream results out of sequence", bad);
	CHECK_EQ(bad, 0);
out:
	hx_sync(fd); /* B checks its words */
	hx_sync(fd);
	close_counting(&ep, &c);
	expect_counter(&c, "chan_atomics", 5 + N_STREAM);
}

struct cpu_adder {
	volatile uint64_t *word;
	int n;
};

static void *cpu_add(void *arg)
{
	struct cpu_adder *a = arg;

	for (int i = 0; i < a->n; i++) {
		__atomic_fetch_add(a->word, 1ull << 32, __ATOMIC_SEQ_CST);
		if (i % 64 == 0)
			sched_yield();
	}
	return NULL;
}

static void values_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct counters c;
	struct hx_ep ep;
	volatile uint64_t *w;
	struct cpu_adder ad;
	pthread_t t;

	stats_on();
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	w = (volatile uint64_t *)ep.buf;
	w[0] = 5;
	w[1] = W1_INIT;
	w[2] = UINT64_MAX - 1;
	w[8] = 0;
	REQUIRE(hx_post_recv(&ep, 1, ep.buf + 8192, 64, ep.mr->lkey) == 0);
	hx_sync(fd);
	{
		struct ibv_wc wc;

		if (HX_EXPECT(ep.rcq, &wc, 1, IBV_WC_SUCCESS, IBV_WC_RECV, 8)) {
			uint64_t v;

			memcpy(&v, ep.buf + 8192, 8);
			CHECK_EQ(v, W1_INIT + 0x10);
		}
	}
	ad.word = &w[8];
	ad.n = N_STREAM;
	REQUIRE(pthread_create(&t, NULL, cpu_add, &ad) == 0);
	hx_sync(fd);
	pthread_join(t, NULL);
	hx_sync(fd);
	CHECK_EQ(w[0], 9);
	CHECK_EQ(w[1], W1_INIT + 0x11);
	CHECK_EQ(w[2], 1);
	CHECK_EQ(w[3], W4_WRITTEN + 1);
	CHECK_EQ(w[8], (uint64_t)N_STREAM + ((uint64_t)N_STREAM << 32));
	hx_sync(fd);
	close_counting(&ep, &c);
	expect_counter(&c, "chan_atomics_served", 5 + N_STREAM);
}

/* ---- errors ---------------------------------------------------------------- */

enum err_case {
	E_RKEY,
	E_BOUNDS,
	E_ALIGN,
	E_MR_RIGHTS,
	E_PD,
	E_QP_RIGHTS,
	E_LKEY,
	E_NUM,
};

static const char *const err_names[E_NUM] = {
	"unknown R_Key",	"beyond the region",
	"misaligned VA",	"region without REMOTE_ATOMIC",
	"region of another PD", "QP without REMOTE_ATOMIC",
	"bad local lkey",
};

/* Good adds of 1 before case k (the QP without REMOTE_ATOMIC has none). */
static uint64_t good_before(int k)
{
	return k <= E_QP_RIGHTS ? (uint64_t)k : (uint64_t)k - 1;
}

static void errors_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct counters c;
	struct hx_ep ep;
	uint64_t *r;
	int k;

	stats_on();
	hx_ep_open(&ep, &o, fd);
	r = (uint64_t *)ep.buf;
	for (k = 0; k < E_NUM; k++) {
		uint64_t raddr = ep.peer.addr, id = 100 * (k + 1);
		uint32_t rkey, other_pd, lkey = ep.mr->lkey;
		enum ibv_wc_status want = IBV_WC_REM_ACCESS_ERR;

		if (k)
			hx_ep_new_qp(&ep);
		hx_ep_connect(&ep);
		rkey = (uint32_t)hx_recv_u64(fd); /* B's read-write-only MR */
		other_pd = (uint32_t)hx_recv_u64(fd);
		hx_log("case %d: %s", k, err_names[k]);
		/* A good one first: the channel is attached (the QP
		 * without REMOTE_ATOMIC refuses its first). */
		if (k != E_QP_RIGHTS) {
			atomic_ok(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD, id, &r[0],
				  ep.peer.addr, 1, 0);
			CHECK_EQ(r[0], good_before(k));
		}
		switch (k) {
		case E_RKEY:
			rkey = ep.peer.rkey + 0x100;
			break;
		case E_BOUNDS:
			raddr += ep.peer.len;
			/* fall through */
		case E_QP_RIGHTS:
			rkey = ep.peer.rkey;
			break;
		case E_ALIGN:
			raddr += 4;
			rkey = ep.peer.rkey;
			want = IBV_WC_REM_INV_REQ_ERR;
			break;
		case E_MR_RIGHTS:
			break;
		case E_PD:
			rkey = other_pd;
			break;
		case E_LKEY:
			rkey = ep.peer.rkey;
			lkey ^= 0x5a00;
			want = IBV_WC_LOC_PROT_ERR;
			break;
		}
		HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
					   IBV_SEND_SIGNALED, id + 1, &r[1],
					   lkey, raddr, rkey, 1000, 0),
			    0);
		HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
					   IBV_SEND_SIGNALED, id + 2, &r[2],
					   ep.mr->lkey, ep.peer.addr,
					   ep.peer.rkey, 1000, 0),
			    0);
		HX_EXPECT(ep.scq, NULL, id + 1, want, -1, -1);
		HX_EXPECT(ep.scq, NULL, id + 2, IBV_WC_WR_FLUSH_ERR, -1, -1);
		HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
		hx_sync(fd); /* B checks its QP and word */
	}
	hx_sync(fd);
	close_counting(&ep, &c);
	expect_counter(&c, "chan_atomics", E_NUM);
}

static void errors_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	volatile uint64_t *w;
	struct ibv_mr *rw, *other;
	struct ibv_pd *pd2;
	struct counters c;
	struct hx_ep ep;
	int k;

	stats_on();
	hx_ep_open(&ep, &o, fd);
	w = (volatile uint64_t *)ep.buf;
	/* The same buffer, readable and writable but not for atomics. */
	rw = ibv_reg_mr(ep.pd, ep.buf, 4096,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				IBV_ACCESS_REMOTE_READ);
	REQUIRE(rw);
	/* And with every right, in another PD than the QP's. */
	pd2 = ibv_alloc_pd(ep.ctx);
	REQUIRE(pd2);
	other = ibv_reg_mr(pd2, ep.buf, 4096, o.mr_access);
	REQUIRE(other);
	for (k = 0; k < E_NUM; k++) {
		if (k) {
			ep.o.qp_access =
				k == E_QP_RIGHTS ?
					IBV_ACCESS_REMOTE_WRITE |
						IBV_ACCESS_REMOTE_READ :
					o.qp_access;
			hx_ep_new_qp(&ep);
		}
		hx_ep_connect(&ep);
		hx_send_u64(fd, rw->rkey);
		hx_send_u64(fd, other->rkey);
		hx_sync(fd);
		/* Only the good adds of 1: the refused one changed
		 * nothing, the one behind it was flushed. */
		CHECK_EQ(w[0], good_before(k + 1));
		CHECK_EQ(hx_qp_state_wait(
				 ep.qp, k == E_LKEY ? IBV_QPS_RTS : IBV_QPS_ERR,
				 3000),
			 k == E_LKEY ? IBV_QPS_RTS : IBV_QPS_ERR);
	}
	hx_sync(fd);
	CHECK_EQ(ibv_dereg_mr(rw), 0);
	CHECK_EQ(ibv_dereg_mr(other), 0);
	CHECK_EQ(ibv_dealloc_pd(pd2), 0);
	close_counting(&ep, &c);
	expect_counter(&c, "chan_atomics_served", good_before(E_NUM));
	/* Each refusal explained and counted by its reason (engine/diag/explain.c),
	 * on either path. */
	CHECK(counter(&c, "access_no_key") >= 1);
	CHECK(counter(&c, "access_bounds") >= 1);
	CHECK(counter(&c, "access_rights") >= 1);
	CHECK(counter(&c, "access_pd") >= 1);
	CHECK(counter(&c, "access_qp_flags") >= 1);
	CHECK(counter(&c, "resp_inv_req") >= 1);
}

/* ---- stopped ---------------------------------------------------------------- */

static void stopped_a(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct counters c;
	struct hx_ep ep;
	uint64_t *r, t0, dt;
	pid_t pid;

	stats_on();
	o.timeout = 14; /* 4.096 us * 2^14 = 67 ms */
	o.retry_cnt = 2;
	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	r = (uint64_t *)ep.buf;
	pid = (pid_t)hx_recv_u64(fd);
	atomic_ok(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, &r[0], ep.peer.addr, 1,
		  0);
	REQUIRE(kill(pid, SIGSTOP) == 0);
	REQUIRE(hx_wait_stopped(pid));
	t0 = hx_now_ms();
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_CMP_AND_SWP,
				   IBV_SEND_SIGNALED, 2, &r[1], ep.mr->lkey,
				   ep.peer.addr, ep.peer.rkey, 1, 2),
		    0);
	HX_CHECK_RC(hx_post_atomic(&ep, IBV_WR_ATOMIC_FETCH_AND_ADD,
				   IBV_SEND_SIGNALED, 3, &r[2], ep.mr->lkey,
				   ep.peer.addr, ep.peer.rkey, 1, 0),
		    0);
	HX_EXPECT_T(ep.scq, NULL, 2, IBV_WC_RETRY_EXC_ERR, -1, -1, 10000);
	dt = hx_now_ms() - t0;
	hx_log("retry exceeded after %llu ms", (unsigned long long)dt);
	CHECK(dt >= 150 && dt < 10000);
	HX_EXPECT(ep.scq, NULL, 3, IBV_WC_WR_FLUSH_ERR, -1, -1);
	HX_CHECK_STATE(ep.qp, IBV_QPS_ERR);
	REQUIRE(kill(pid, SIGCONT) == 0);
	hx_sync(fd);
	close_counting(&ep, &c);
	expect_counter(&c, "chan_atomics", 2);
	CHECK(counter(&c, "retry_exceeded_err") >= 1);
}

static void stopped_b(int fd)
{
	struct hx_opts o = hx_opts_default();
	struct hx_ep ep;

	hx_ep_open(&ep, &o, fd);
	hx_ep_connect(&ep);
	hx_send_u64(fd, (uint64_t)getpid());
	hx_sync(fd); /* continued */
	CHECK_EQ(hx_ep_close(&ep), 0);
}

static const struct hx_case cases[] = {
	HX_CASE(values, 60), HX_CASE(errors, 60), HX_CASE(stopped, 60), { 0 }
};

HX_MAIN(cases)
